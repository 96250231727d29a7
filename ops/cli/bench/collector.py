"""``omdp bench collector``: the latency collector's cost per sampled record, and the cost of
reading the stats segment (the work is in ``ops.bench.collector``)."""
from __future__ import annotations

from pathlib import Path

import click

from ops.cli.bench.output import write_bench_json

from omdp.units import fmt_us


@click.command("collector")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the figures here.")
@click.option("--batch-records", default=1024, show_default=True, help="Records per batch.")
@click.option("--batches", default=400, show_default=True, help="Timed collect() calls per case.")
@click.option("--record-bytes", default=256, show_default=True, help="Record size (the OPRA record is 256).")
@click.option("--repeats", default=200, show_default=True, help="Timed calls per stats reader query.")
def collector(json_out: Path | None, batch_records: int, batches: int, record_bytes: int, repeats: int) -> None:
    """Latency collector ns per sampled record; stats segment snapshot read cost."""
    if batch_records < 1 or batches < 1 or repeats < 1:
        raise click.BadParameter("--batch-records, --batches and --repeats must be >= 1")
    from ops.bench.collector import bench_record_dtype, run_collector_bench

    try:
        bench_record_dtype(record_bytes)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    res = run_collector_bench(batch_records, batches, record_bytes, repeats)
    for case in ("collector_all_sampled_no_stats", "collector_all_sampled_with_stats", "collector_1_in_1600",
                 "collector_one_record_batch"):
        r = res[case]
        click.echo(f"{case:34} {r['ns_per_sample']['median']:9.1f} ns/sample  {r['ns_per_record']['median']:8.2f} "
                   f"ns/record  (median of {r['batches']} batches of {r['records_per_batch']} records)")
    for name, q in res["stats_reader_us"].items():
        click.echo(f"reader {name:27} {fmt_us(q['median']):>9} median  {fmt_us(q['p90']):>9} p90")
    if json_out:
        write_bench_json(json_out, res)
        click.echo(f"wrote {json_out}")
