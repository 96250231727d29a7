"""``omdp replay``: play a capture directory onto loopback multicast (or into a Vega ring),
paced in C, with live status, an HTTP control API and a summary at the end."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click

from ops.cli.options import DATA_ENVVAR, one_address, positive_seconds, writable_output
from ops.cli.stop_signals import stop_on_signals


STATUS_PERIOD_S = 0.2
PLAIN_STATUS_EVERY_S = 10.0


def _cpus(text: str | None) -> tuple[int, ...]:
    if not text:
        return ()
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r}: give CPU numbers separated by commas", param_hint="--cpus") from None


@click.command("replay")
@click.argument("capture_dir", type=click.Path(path_type=Path))
@click.option("--rate", help="N x 24,000 packets/s over the lines replayed, e.g. 10x or 0.5x (recorded gaps scaled)")
@click.option("--speed", type=str, help="K times the recorded speed")
@click.option("--pps", type=str, help="N packets/s, evenly spaced in recorded order")
@click.option("--lines", "lines", help="lines to replay, e.g. 1-24 or 1,3,5-7 (default: every line of the manifest)")
@click.option("--copies", help="A, B or A,B (default: A,B to multicast, A into a ring)")
@click.option("--loop", is_flag=True, help="replay again and again; each lap starts with a sequence reset per line")
@click.option("--seconds", type=float, callback=positive_seconds, help="stop after this many seconds")
@click.option("--target", default="multicast", show_default=True, help="multicast, or ring:NAME (a Vega ring)")
@click.option("--interface", default="127.0.0.1", show_default=True, help="multicast interface address")
@click.option("--xdp", metavar="IFACE:QUEUE",
              help="send through an AF_XDP socket on this interface queue (docs/xdp.md; root, --ttl >= 1)")
@click.option("--ttl", type=int, default=0, show_default=True, help="multicast TTL (0: stays on this host)")
@click.option("--senders", type=int, default=1, show_default=True, help="sender processes; lines are split among them")
@click.option("--cpus", help="pin sender i to the i-th of these CPUs, e.g. 0 or 0,1")
@click.option("--drop", "drop", help="drop packets at random per copy, e.g. A:0.001,B:0.0005")
@click.option("--seed", type=int, default=0, show_default=True, help="seed of --drop")
@click.option("--spin-us", type=float, default=100.0, show_default=True, help="spin (not sleep) this close to a send")
@click.option("--realtime", is_flag=True,
              help="senders lock their memory and run SCHED_FIFO (needs root, CAP_SYS_NICE or RLIMIT_RTPRIO; "
                   "refused: a warning, and the replay runs on)")
@click.option("--data", "data_dir", envvar=DATA_ENVVAR, show_envvar=True, type=click.Path(path_type=Path), help="omdp data directory (default: the one holding CAPTURE_DIR)")
@click.option("--run-dir", type=click.Path(path_type=Path), help="run directory (default: DATA/runs/<date>/<run_id>)")
@click.option("--no-intended", is_flag=True, help="do not write intended.parquet")
@click.option("--address", default=None, metavar="HOST:PORT",
              help="HTTP API address (default 127.0.0.1:0; PORT alone: on 127.0.0.1; port 0: any free one)")
@click.option("--http-port", type=click.IntRange(0, 65535), default=None, hidden=True,
              help="old spelling of --address PORT")
@click.option("--no-http", is_flag=True, help="no HTTP API")
@click.option("--token", envvar="OMDP_REPLAY_TOKEN", help="token of the HTTP actions (default: a random one, printed)")
@click.option("--paused", is_flag=True, help="do not start until POST /api/v1/replay/start (implies --hold)")
@click.option("--hold", is_flag=True, help="keep the HTTP API up after the replay ends, until Ctrl-C")
@click.option("--json", "json_out", type=click.Path(path_type=Path), callback=writable_output,
              help="write the final status as JSON here")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar or status lines (the summary still prints)")
def replay(capture_dir: Path, rate: str | None, speed: str | None, pps: str | None, lines: str | None, copies: str | None,
           loop: bool, seconds: float | None, target: str, interface: str, xdp: str | None, ttl: int, senders: int, cpus: str | None,
           drop: str | None, seed: int, spin_us: float, realtime: bool, data_dir: Path | None, run_dir: Path | None,
           no_intended: bool,
           address: str | None, http_port: int | None, no_http: bool, token: str | None, paused: bool, hold: bool, json_out: Path | None,
           quiet: bool) -> None:
    """Replay the captures in CAPTURE_DIR (captures/<date> of omdp synth) at a rate."""
    from pydantic import ValidationError

    from omdp.runtime.machine import keep_thread_off
    from ops.dashboard.serve import parse_address
    from ops.replay.capture_set import CaptureInputError
    from ops.replay.config import ReplayConfig, ReplayConfigError
    from ops.replay.rates import RateError, RateSpec
    from ops.replay.service import ReplaySenderError, ReplayService, ReplayStateError

    address = one_address(address, None if http_port is None else str(http_port), "--http-port") or "127.0.0.1:0"
    try:
        parse_address(address)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--address") from None
    try:
        spec = RateSpec.parse(rate=rate, speed=speed, pps=pps)
        config = ReplayConfig(
            capture_dir=capture_dir, rate=spec, lines=lines, copies=copies, loop=loop, seconds=seconds, target=target,
            interface=interface, ttl=ttl, senders=senders, **({"multicast_sender": "xdp", "xdp": xdp} if xdp else {}), cpus=_cpus(cpus), drops=drop or {}, seed=seed,
            spin_us=spin_us, realtime=realtime, data_dir=data_dir, run_dir=run_dir, write_intended=not no_intended,
        )
    except (RateError, ReplayConfigError) as e:
        raise click.UsageError(str(e)) from None
    except ValidationError as e:
        raise click.UsageError("; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())) from None

    keep_thread_off(set(config.cpus))  # this thread and the HTTP and supervisor threads it starts
    if paused and no_http:
        raise click.UsageError("--paused waits for POST /api/v1/replay/start: it needs the HTTP API (drop --no-http)")
    service = ReplayService()
    try:
        service.configure(config)
    except (CaptureInputError, ReplayConfigError) as e:
        raise click.ClickException(f"nothing sent: {e}") from None
    mlock = _multicast_lock(service)

    server = _serve(service, token, address) if not no_http else None
    started = False
    try:
        with stop_on_signals():
            if not paused:
                try:
                    st = service.start()
                except (CaptureInputError, ReplayConfigError, ReplayStateError, ReplaySenderError, RateError) as e:
                    raise click.ClickException(f"nothing sent: {e}") from None
                started = True
                click.echo(f"replay {st.run_id}: {st.rate} ({st.target_pps:,.0f} pps) of {capture_dir} -> {config.target}, "
                           f"copies {','.join(st.copies)}; run directory {st.run_dir}", err=True)
                if st.intended_table:
                    click.echo(f"intended-time table (shared memory): {st.intended_table}", err=True)
                _follow(service, quiet)
            if server is not None and (hold or paused):
                click.echo("holding the HTTP API; Ctrl-C to quit", err=True)
                while True:
                    time.sleep(1.0)
    except KeyboardInterrupt:
        click.echo("stopping", err=True)
    finally:
        final = service.stop()
        if server is not None:
            server.stop()
        if mlock is not None:
            mlock.release()
    if started or final.state != "idle":
        click.echo(_summary(final))
        if json_out is not None:
            from ops.cli.options import write_output

            write_output(json_out, final.model_dump_json(indent=2))
    if final.state == "failed":
        sys.exit(1)


def _multicast_lock(service: object) -> object:
    """Multicast: this replay's lock on the groups and ports it sends to (another run or
    replay on them would mix the feeds; ``ops.pipeline.multicast_lock``); None into a ring."""
    import os

    from ops.pipeline.multicast_lock import MulticastBusy, MulticastLock

    endpoints = service.multicast_endpoints()  # type: ignore[attr-defined]
    if not endpoints:
        return None
    try:
        return MulticastLock.acquire(f"replay{os.getpid()}", endpoints)
    except MulticastBusy as e:
        raise click.ClickException(f"nothing sent: {e}") from None


def _summary(st: object) -> str:
    from ops.replay.report import summary

    return summary(st)  # type: ignore[arg-type]


def _serve(service: object, token: str | None, address: str) -> object:
    from ops.dashboard.serve import parse_address
    from ops.replay.http_api import new_token, replay_app
    from ops.replay.http_server import ThreadedServer

    token = token or new_token()
    app = replay_app(service, token)  # type: ignore[arg-type]
    host, port = parse_address(address)
    try:
        server = ThreadedServer(app, host=host, port=port)
        server.start()
    except (OSError, RuntimeError) as e:
        raise click.ClickException(f"HTTP API on {host}:{port}: {e}") from None
    click.echo(f"HTTP API: {server.url}/api/v1/replay (actions need: Authorization: Bearer {token})", err=True)
    return server


def _follow(service: object, quiet: bool = False) -> None:
    """Until the replay ends: a tqdm bar in a terminal, a status line every 10 s otherwise;
    neither with ``quiet``."""
    from tqdm import tqdm

    from ops.cli.options import seconds_bar_format
    from ops.replay.report import postfix

    st = service.status()  # type: ignore[attr-defined]
    cfg = service.config  # type: ignore[attr-defined]
    by_time = st.packets_total is None
    total = cfg.seconds if by_time else st.packets_total
    tty = sys.stderr.isatty() and os.environ.get("TERM") != "dumb"
    bar = tqdm(total=total, unit="s" if by_time else "pkt", unit_scale=not by_time, dynamic_ncols=True,
               disable=quiet or not tty, file=sys.stderr, bar_format=seconds_bar_format() if by_time else None)
    last_plain = time.monotonic()
    try:
        while service.running:  # type: ignore[attr-defined]
            time.sleep(STATUS_PERIOD_S)
            st = service.status()  # type: ignore[attr-defined]
            bar.n = round(st.elapsed_s, 1) if by_time else st.packets_sent
            bar.set_postfix_str(postfix(st), refresh=False)
            bar.refresh()
            if not tty and not quiet and time.monotonic() - last_plain >= PLAIN_STATUS_EVERY_S:
                last_plain = time.monotonic()
                click.echo(f"{st.packets_sent:,} packets, {postfix(st)}", err=True)
    finally:
        bar.close()
