"""`--gpu auto`: a fake `nvidia-smi` on PATH stands for the machine's GPUs."""

from __future__ import annotations

import os
import stat

import pytest

from batchtui.cli import main
from sim import detect as d
from sim.profiles import load_profiles

H100_SXM = "NVIDIA H100 80GB HBM3, 81559 MiB\n"
H100_PCIE = "NVIDIA H100 PCIe, 81559 MiB\n"
TWO_A100_40 = "NVIDIA A100-SXM4-40GB, 40960 MiB\nNVIDIA A100-SXM4-40GB, 40960 MiB\n"
UNKNOWN = "NVIDIA Quadro Z9000, 12288 MiB\n"
NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
             "that the latest NVIDIA driver is installed and running.\n")


def fake_nvidia_smi(tmp_path, monkeypatch, *, stdout: str = "", stderr: str = "", status: int = 0) -> None:
    """PATH holds only a directory with an nvidia-smi script that prints `stdout` (and checks it
    was asked the query --gpu auto asks)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "nvidia-smi"
    script.write_text(  # shell builtins only: PATH holds nothing else
        "#!/bin/sh\n"
        f'[ "$1" = "{d.QUERY[0]}" ] && [ "$2" = "{d.QUERY[1]}" ] || {{ echo "unexpected query: $*" >&2; exit 9; }}\n'
        f"printf '%s' {_quoted(stdout)}\nprintf '%s' {_quoted(stderr)} >&2\nexit {status}\n",
        encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(bin_dir))


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


@pytest.fixture
def profiles():
    return load_profiles()


def test_one_h100_sxm(tmp_path, monkeypatch, profiles):
    fake_nvidia_smi(tmp_path, monkeypatch, stdout=H100_SXM)
    found = d.detect(profiles)
    assert found.found and found.profile_id == "h100-sxm" and found.count == 1
    assert found.gpus[0].memory_bytes == 81559 * 2**20
    assert found.short() == "H100 SXM 80 GB"
    assert "found NVIDIA H100 80GB HBM3 (80 GiB)" in found.notice() and "(h100-sxm)" in found.notice()


def test_an_h100_pcie_is_not_the_sxm(tmp_path, monkeypatch, profiles):
    fake_nvidia_smi(tmp_path, monkeypatch, stdout=H100_PCIE)
    found = d.detect(profiles)
    assert found.profile_id == "h100-pcie"
    assert profiles.gpu("h100-pcie").hbm_bandwidth < profiles.gpu("h100-sxm").hbm_bandwidth


def test_two_a100_40gb_count_and_the_first_counts(tmp_path, monkeypatch, profiles):
    fake_nvidia_smi(tmp_path, monkeypatch, stdout=TWO_A100_40)
    found = d.detect(profiles)
    assert found.profile_id == "a100-40gb" and found.count == 2
    assert found.gpus_text() == "2 x NVIDIA A100-SXM4-40GB (40 GiB)"
    assert found.short() == "2 x A100 40 GB SXM"


def test_an_unknown_gpu_falls_back_to_the_lessons_h100(tmp_path, monkeypatch, profiles):
    fake_nvidia_smi(tmp_path, monkeypatch, stdout=UNKNOWN)
    found = d.detect(profiles)
    assert found.outcome == d.UNKNOWN and found.profile_id == "h100-sxm"
    notice = found.notice()
    assert "NVIDIA Quadro Z9000" in notice and "no GPU profile names" in notice
    assert "H100 SXM 80 GB instead" in notice and "nvidia_smi_names" in notice


def test_a_user_profile_can_name_an_unknown_gpu(tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path, monkeypatch, stdout=UNKNOWN)
    extra = tmp_path / "mine.toml"
    extra.write_text('[gpus.z9000]\nname = "Z9000"\nhbm_bandwidth = 1e12\nbf16_peak_flops = 200e12\n'
                     'memory_bytes = 12.5e9\ninterconnect_bandwidth = 32e9\n'
                     'nvidia_smi_names = ["NVIDIA Quadro Z9000"]\n', encoding="utf-8")
    assert d.detect(load_profiles(extra)).profile_id == "z9000"


def test_a_failing_nvidia_smi_says_why(tmp_path, monkeypatch, profiles):
    fake_nvidia_smi(tmp_path, monkeypatch, stdout=NO_DRIVER, status=9)
    found = d.detect(profiles)
    assert found.outcome == d.FAILED and found.profile_id == "h100-sxm"
    assert "exit status 9" in found.notice() and "couldn't communicate with the NVIDIA driver" in found.notice()


def test_no_gpu_listed(tmp_path, monkeypatch, profiles):
    fake_nvidia_smi(tmp_path, monkeypatch, stdout="")
    found = d.detect(profiles)
    assert found.outcome == d.NO_GPU and found.notice().startswith("nvidia-smi lists no GPU")


def test_no_nvidia_smi_on_path(tmp_path, monkeypatch, profiles):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    found = d.detect(profiles)
    assert found.outcome == d.NO_NVIDIA_SMI and found.profile_id == "h100-sxm"
    assert found.notice().startswith("no nvidia-smi on PATH")


def test_a_hung_nvidia_smi_times_out(tmp_path, monkeypatch, profiles):
    fake_nvidia_smi(tmp_path, monkeypatch, stdout=H100_SXM)
    script = tmp_path / "bin" / "nvidia-smi"
    script.write_text("#!/bin/sh\nwhile :; do :; done\n", encoding="utf-8")
    found = d.detect(profiles, timeout=0.2)
    assert found.outcome == d.FAILED and "no answer within 0.2 s" in found.notice()


@pytest.mark.parametrize(("name", "gpu_id"), [
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("nvidia h100 pcie", "h100-pcie"), ("NVIDIA H100 NVL", "h100-nvl"),
    ("NVIDIA H200", "h200"), ("NVIDIA A100-SXM4-80GB", "a100-80gb"), ("NVIDIA A100 80GB PCIe", "a100-80gb-pcie"),
    ("NVIDIA A100-PCIE-40GB", "a100-40gb-pcie"), ("NVIDIA L40S", "l40s"), ("NVIDIA L40", "l40"),
    ("NVIDIA L4", "l4"), ("NVIDIA B200", "b200"), ("h100-sxm", "h100-sxm"), ("H200 141 GB", "h200"),
    ("h100", "h100-sxm"), ("H100", "h100-sxm"),  # the vendor's plain name: its usual form (an alias)
])
def test_names_map_to_profiles(profiles, name, gpu_id):
    assert d.match_profile(name, profiles) == gpu_id


def test_the_name_map_is_one_to_one(profiles):
    seen = {d.folded(gpu_id): gpu_id for gpu_id in profiles.gpus}
    for gpu in profiles.gpus.values():
        for name in (*gpu.nvidia_smi_names, *gpu.aliases):
            assert seen.get(d.folded(name), gpu.id) == gpu.id, (name, seen.get(d.folded(name)))
            seen[d.folded(name)] = gpu.id


def test_parse_query_reads_odd_lines():
    gpus = d.parse_query("NVIDIA H100 80GB HBM3, 81559 MiB\n\nNVIDIA L4, [N/A]\n")
    assert [g.name for g in gpus] == ["NVIDIA H100 80GB HBM3", "NVIDIA L4"]
    assert gpus[1].memory_bytes is None


# -- on the command line ---------------------------------------------------------------------------

SMALL = ["--num-prompts", "20", "--input-len", "128", "--output-len", "16", "--json"]


@pytest.mark.parametrize(("stdout", "status", "gpu_id", "said"), [
    (H100_PCIE, 0, "h100-pcie", "found NVIDIA H100 PCIe (80 GiB): simulating the H100 PCIe 80 GB profile"),
    (TWO_A100_40, 0, "a100-40gb", "found 2 x NVIDIA A100-SXM4-40GB (40 GiB)"),
    (UNKNOWN, 0, "h100-sxm", "which no GPU profile names"),
    (NO_DRIVER, 9, "h100-sxm", "nvidia-smi failed (exit status 9"),
])
def test_sim_gpu_auto(tmp_path, monkeypatch, capsys, stdout, status, gpu_id, said):
    import json

    fake_nvidia_smi(tmp_path, monkeypatch, stdout=stdout, status=status)
    assert main(["sim", "--gpu", "auto", *SMALL]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["gpu"] == gpu_id
    assert err.startswith("batchtui: --gpu auto: ") and said in err and err.count("\n") == 1


def test_sweep_gpu_auto_without_nvidia_smi(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["sweep", "--gpu", "auto", "--request-rates", "2,4", *SMALL]) == 0
    err = capsys.readouterr().err
    assert "no nvidia-smi on PATH" in err and "H100 SXM 80 GB instead" in err


def test_parsing_gpu_auto_for_the_app_asks_nothing_yet(tmp_path, monkeypatch):
    # `batchtui --gpu auto` hands detection to a worker after the first frame: parsing the
    # options must neither run nvidia-smi nor import the simulator.
    import subprocess
    import sys

    fake_nvidia_smi(tmp_path, monkeypatch, stdout=H100_PCIE)
    code = ("import sys; from batchtui.cli.parser import build_parser; "
            "args = build_parser(None).parse_args(['--gpu', 'auto']); assert args.gpu == 'auto'; "
            "assert not [m for m in sys.modules if m == 'sim' or m.startswith('sim.')], sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PATH": ""})
