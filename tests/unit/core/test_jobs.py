"""`jobs: auto`: one entrypoint per core, as many as the memory holds, 1 where a GPU is."""

from __future__ import annotations

import pytest

from gbbot.core.jobs import AUTO, MEMORY_PER_JOB, Machine, auto, parse


@pytest.mark.parametrize(
    ("machine", "expected"),
    [
        (Machine(cpus=4, available_bytes=64 * MEMORY_PER_JOB, gpu=False), 4),  # the cores
        (Machine(cpus=16, available_bytes=3 * MEMORY_PER_JOB + 1, gpu=False), 3),  # the memory
        (Machine(cpus=8, available_bytes=MEMORY_PER_JOB // 2, gpu=False), 1),  # never below 1
        (Machine(cpus=8, available_bytes=None, gpu=False), 8),  # memory unknown: the cores
        (Machine(cpus=8, available_bytes=64 * MEMORY_PER_JOB, gpu=True), 1),  # one GPU, shared
    ],
)
def test_auto_is_the_cores_bounded_by_memory_and_one_with_a_gpu(machine, expected):
    assert auto(machine) == expected


def test_jobs_is_a_whole_number_or_auto():
    assert parse("3") == 3 and parse(AUTO) == AUTO
    for bad in ("0", "-1", "two", "", "1.5"):
        with pytest.raises(ValueError, match="whole number of at least 1 or 'auto'"):
            parse(bad)


def test_auto_on_this_machine_and_where_the_config_asks_for_gpus(tmp_path):
    from gbbot import api
    from gbbot.core.config import parse_config
    from gbbot.main import main

    cpu = parse_config("version: 1\nentrypoints: [{name: e, run: 'true'}]\n")
    gpu = parse_config(
        "version: 1\nentrypoints: [{name: e, run: 'true'}]\nrunner: {gpus: all, backend: container, image: x}\n"
    )
    assert api.jobs_for(AUTO, gpu) == 1 and api.jobs_for(3, gpu) == 3
    assert 1 <= api.jobs_for(AUTO, cpu) <= len(__import__("os").sched_getaffinity(0))
    with pytest.raises(SystemExit) as usage_error:
        main(["check", "--root", str(tmp_path), "--jobs", "0"])
    assert usage_error.value.code == 2
