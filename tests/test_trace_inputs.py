"""`gpuplat simulate` on the hostile traces of issue 38: each one a positioned diagnostic (exit 1)
or a usage sentence (exit 2), at once, never a replay that runs for hours or an internal error."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gpuplat.cli import main

H = "submit,duration,gpus\n"
SAMPLE = 'DCGM_FI_DEV_GPU_UTIL{UUID="g",pod="p",namespace="n"} 50 '
EXPORT = '{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {"__name__": ' \
         '"DCGM_FI_DEV_GPU_UTIL", "UUID": "g", "pod": "p"}, "values": [[%s, "50"]]}]}}'  # fmt: skip


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("inf.csv", H + "0,inf,1\n", ":2:1: error GP032 $: duration 'inf' is not a finite number"),
        ("huge.csv", H + "0,1e308,1\n", ":2:1: error GP032 $: duration 1e+308 s is not within 0 and 366 days"),
        ("year.csv", H + "0,1e12,1\n", ":2:1: error GP032 $: duration 1e+12 s is not within 0 and 366 days"),
        ("nan.csv", H + "nan,60,1\n", ":2:1: error GP032 $: submit 'nan' is not a time within 1e+10 seconds"),
        ("far.csv", H + "-1e18,60,1\n1e18,60,1\n", ":2:1: error GP032 $: submit '-1e18' is not a time"),
        ("span.csv", H + "0,60,1\n40000000,60,1\n",
         ":3:1: error GP032 $: this job ends 463 days after the job at line 2 is submitted"),
        ("9999.csv", "timestamp,duration,num_gpus,cluster\n2017-10-03 10:00,600,1,a\n9999-12-31,600,1,a\n",
         ":3:1: error GP032 $: timestamp '9999-12-31' is not a time"),
        ("gpus.csv", H + "0,60,inf\n", ":2:1: error GP032 $: gpus 'inf' is not a finite number"),
        ("half.csv", H + "0,60,0.5\n", ":2:1: error GP032 $: gpus 0.5 is not a whole number of GPUs"),
        ("nandur.csv", H + "0,nan,1\n", ":2:1: error GP032 $: duration 'nan' is not a finite number"),
        ("spaces.csv", "submit time,duration,gpus\n0,60,1\n",
         ":1:1: error GP033 $: unknown trace shape: the header's columns are 'submit time', 'duration', 'gpus'"),
        ("late.txt", SAMPLE + "1506816000000\n" + SAMPLE + "1000000000000000000\n",
         ":2:1: error GP032 $: sample time 1e+15 is not unix seconds"),
        ("digits.txt", SAMPLE + "9" * 400 + "\n", ":1:1: error GP032 $: timestamp '9999"),
        ("power.txt", SAMPLE + "1e400.0\n", ":1:1: error GP032 $: timestamp '1e400.0' is not a time"),
        ("digits.json", EXPORT % ("1" + "0" * 400), ":1:153: error GP031 $: the integer of 401 digits"),
        ("nested.json", '{"status": ' + "[" * 200_000 + "]" * 200_000 + "}",
         ":1:75: error GP031 $: the JSON nests more than 64 levels deep"),
        ("binary.csv", H + "0,60,1\x00\x00\n", ":2:1: error GP030 $: the file is binary (a NUL byte at offset 27)"),
    ],
)
def test_a_hostile_trace_is_refused_at_its_line_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, says: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    started = time.perf_counter()
    assert main(["simulate", "--stack", "prod", "--trace", str(path)]) == 1
    assert time.perf_counter() - started < 5
    err = capsys.readouterr().err
    assert err.startswith(f"{path}{says}"), err
    assert main(["simulate", "--stack", "prod", "--trace", str(path), "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)  # strict JSON: no NaN anywhere
    assert not document["valid"] and document["diagnostics"][0]["file"] == str(path)


def test_a_bom_and_extra_fields_are_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bom.csv"
    path.write_text("\ufeff" + H + "0,600,1,extra,fields\n30,1200,2\n", encoding="utf-8")
    assert main(["simulate", "--stack", "prod", "--trace", str(path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs"] == 2


def test_a_huge_sparse_file_and_a_device_are_refused_before_they_are_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sparse = tmp_path / "sparse.csv"
    with sparse.open("wb") as handle:
        handle.truncate(2 * 1024**3)  # 2 GB of NUL bytes, no disk
    assert main(["simulate", "--stack", "prod", "--trace", str(sparse)]) == 1
    assert "error GP030 $: the file is 2,147,483,648 bytes; a trace is at most 256 MiB" in capsys.readouterr().err
    small = tmp_path / "small.csv"
    with small.open("wb") as handle:
        handle.truncate(100 * 1024**2)
    assert main(["simulate", "--stack", "prod", "--trace", str(small)]) == 1
    assert ":1:1: error GP030 $: the file is binary (a NUL byte at offset 0)" in capsys.readouterr().err
    assert main(["simulate", "--stack", "prod", "--trace", "/dev/zero"]) == 2
    assert "cannot read /dev/zero: it is not a regular file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("pairs", "says"),
    [
        (["default=nosuch"], "--tenant-map names nosuch, not a tenant of the spec"),
        (["a=research", "a=inference"], "trace tenant 'a' is already mapped to 'research'; map each trace tenant once"),
        (["a"], "--tenant-map 'a': expected TRACE_TENANT=SPEC_TENANT"),
    ],
)
def test_a_bad_tenant_map_is_a_usage_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pairs: list[str], says: str
) -> None:
    path = tmp_path / "t.csv"
    path.write_text(H + "0,600,1\n")
    argv = ["simulate", "--stack", "prod", "--trace", str(path)]
    assert main([*argv, *(f"--tenant-map={p}" for p in pairs)]) == 2
    assert says in capsys.readouterr().err
