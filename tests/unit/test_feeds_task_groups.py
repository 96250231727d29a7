"""The feeds job's task groups (ops.spark.feeds.feeds_job.task_groups): every file in exactly one
group, at most the tasks asked for and none empty, totals balanced largest first, one file
per task when there are fewer files than tasks."""
from __future__ import annotations

from ops.spark.feeds.feeds_job import task_groups


def test_every_file_once_and_groups_balanced() -> None:
    sizes = [10_000_000 + 37_000 * (i % 7) for i in range(24)]
    groups = task_groups(sizes, 8)
    assert len(groups) == 8 and all(groups)
    assert sorted(i for g in groups for i in g) == list(range(24))
    totals = [sum(sizes[i] for i in g) for g in groups]
    assert max(totals) - min(totals) <= max(sizes) - min(sizes)


def test_a_large_file_gets_a_group_of_its_own() -> None:
    groups = task_groups([100, 10, 10, 10, 10, 10, 10], 2)
    assert [0] in groups and sorted(len(g) for g in groups) == [1, 6]


def test_fewer_files_than_tasks_and_edge_cases() -> None:
    assert sorted(task_groups([5, 9, 7], 8)) == [[0], [1], [2]]
    assert task_groups([3, 3], 0) == [[0, 1]]
    assert task_groups([], 4) == []
