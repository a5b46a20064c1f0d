"""The local Ray cluster a sweep starts (no --ray-address) listens on loopback only (issue 19).
In a fresh process (tests/conftest.py's RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 would hide the
default): at the first worker's hello, psutil lists every cluster process's bound sockets."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
import textwrap

from groupchat_core.sweeps import parse_sweep
from tests.helpers import ROOT

CHILD = textwrap.dedent("""
    import json, sys
    import psutil
    from groupchat_core.sweeps import _ray_executor
    from groupchat_core.cli import main

    found = {}
    take = _ray_executor.RayExecutor._take

    def sockets():
        me = psutil.Process()
        out = []
        for proc in [me, *me.children(recursive=True)]:
            try:
                name = proc.name()
                for conn in proc.net_connections(kind="inet"):
                    udp = conn.type == 2  # SOCK_DGRAM: bound, never "listening"
                    if conn.laddr and (conn.status == psutil.CONN_LISTEN or udp and not conn.raddr):
                        out.append([name, conn.laddr.ip, conn.laddr.port])
            except psutil.Error:  # a process that just ended
                pass
        return out

    def watching(self, job, state, item, usage):
        if item["kind"] == "hello" and "sockets" not in found:
            found["sockets"] = sockets()
        return take(self, job, state, item, usage)

    _ray_executor.RayExecutor._take = watching
    code = main(sys.argv[1:])
    print("SOCKETS " + json.dumps(found.get("sockets")))
    print("EXIT " + str(code))
""")


def is_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip.split("%")[0])
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1
    return (mapped or address).is_loopback


def test_the_local_cluster_of_a_cli_sweep_listens_on_loopback_only(tmp_path):
    agents = [{"agent_name": n, "model_name": "sim/balanced"} for n in ("A", "B")]
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(parse_sweep({
        "name": "loopback", "base": {"max_loops": 3, "agents": agents},
        "grid": {"threshold": [0.5]}, "tasks": ["t"], "repeats": 1,
        "bid_cache": False}).to_data()))
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, "--db", f"sqlite:///{tmp_path}/ray.db", "sweep",
         str(path), "--executor", "ray", "--quiet"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines()
                 if line.startswith(("SOCKETS ", "EXIT ")))
    assert lines.get("EXIT") == "0", done.stderr[-3000:]
    found = json.loads(lines["SOCKETS"])
    names = {name for name, _, _ in found}
    assert {"gcs_server", "raylet"} <= names  # the whole cluster was seen
    exposed = [(name, ip, port) for name, ip, port in found if not is_loopback(ip)]
    assert not exposed, f"listening beyond loopback: {exposed}"
