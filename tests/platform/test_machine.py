"""The CPUs a process can use: affinity, cgroup quotas, physical cores, and the embedded
Ray sized by them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from rlsuite.platform import machine


def _write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _tree(tmp_path, cgroup: str, files: dict[str, str], topology: dict[int, tuple[int, int]]):
    """A fake /proc/self/cgroup, cgroup files under /sys/fs/cgroup and CPU topology."""
    _write(tmp_path / "proc" / "self" / "cgroup", cgroup)
    for rel, text in files.items():
        _write(tmp_path / "sys" / "fs" / "cgroup" / rel, text)
    for cpu, (package, core) in topology.items():
        base = tmp_path / "sys" / "devices" / "system" / "cpu" / f"cpu{cpu}" / "topology"
        _write(base / "physical_package_id", f"{package}\n")
        _write(base / "core_id", f"{core}\n")
    return str(tmp_path / "sys"), str(tmp_path / "proc")


def test_a_cgroup_v2_quota_anywhere_above_the_group_limits_it(tmp_path):
    sys_root, proc_root = _tree(
        tmp_path,
        "0::/outer/inner\n",
        {"outer/cpu.max": "250000 100000\n", "outer/inner/cpu.max": "max 100000\n"},
        {},
    )
    assert machine.cgroup_cpu_quota(sys_root, proc_root) == 2.5


def test_no_quota_is_none_in_v2_and_v1(tmp_path):
    sys_root, proc_root = _tree(tmp_path, "0::/\n", {"cpu.max": "max 100000\n"}, {})
    assert machine.cgroup_cpu_quota(sys_root, proc_root) is None
    sys_root, proc_root = _tree(
        tmp_path / "v1",
        "2:cpu,cpuacct:/\n",
        {"cpu,cpuacct/cpu.cfs_quota_us": "-1\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"},
        {},
    )
    assert machine.cgroup_cpu_quota(sys_root, proc_root) is None


def test_a_v1_quota_whose_host_path_is_not_mounted_is_read_at_the_mount_root(tmp_path):
    # inside a container /proc/self/cgroup names the host's path; the mount's root is the group
    sys_root, proc_root = _tree(
        tmp_path,
        "4:cpu,cpuacct:/docker/abc123\n",
        {
            "cpu,cpuacct/cpu.cfs_quota_us": "150000\n",
            "cpu,cpuacct/cpu.cfs_period_us": "100000\n",
        },
        {},
    )
    assert machine.cgroup_cpu_quota(sys_root, proc_root) == 1.5


def test_usable_cpus_are_the_quota_rounded_down_when_it_is_below_the_affinity(tmp_path):
    allowed = sorted(os.sched_getaffinity(0))
    sys_root, proc_root = _tree(
        tmp_path,
        "0::/job\n",
        {"job/cpu.max": "150000 100000\n"},
        {c: (0, c) for c in allowed},
    )
    cpus = machine.cpu_topology(sys_root, proc_root)
    assert cpus.quota == 1.5 and cpus.affinity == len(allowed)
    assert cpus.usable == 1
    if len(allowed) > 1:
        assert "cgroup quota 1.5" in cpus.describe()


def test_two_threads_per_core_are_counted_as_one_physical_core(tmp_path):
    sys_root, _ = _tree(tmp_path, "", {}, {0: (0, 0), 1: (0, 1), 2: (0, 0), 3: (0, 1)})
    assert machine.physical_cores([0, 1, 2, 3], sys_root) == 2
    cpus = machine.CPUs(logical=4, affinity=4, quota=None, usable=4, physical_cores=2)
    assert cpus.threads_per_core == 2.0
    assert "2 physical cores (2 threads per core)" in cpus.describe()
    assert machine.physical_cores([0, 7], sys_root) is None  # cpu7 has no topology: unknown


def test_an_embedded_ray_gets_the_cpus_the_process_may_run_on():
    """A process held to one CPU starts Ray with one CPU, not the machine's count, and the
    runner plan counts one CPU before Ray is up."""
    code = (
        "import os, json; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
        "from rlsuite.platform import cluster, resources\n"
        "before = resources.cpus_for_actors()\n"
        "info = cluster.init()\n"
        "try:\n"
        "    print(json.dumps({'before': before, 'ray': info.num_cpus,"
        " 'logical': os.cpu_count()}))\n"
        "finally:\n"
        "    cluster.shutdown()\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=180, check=False
    )
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["before"] == 1.0
    assert got["ray"] == 1.0
    assert got["logical"] == os.cpu_count()
