"""Loading litellm also pays what its first completion would import (issue 24, target 2), so a
warm-up (the dashboard's, groupchat_ui/kit/warmup.py) leaves the first request nothing to load;
and the set-up runs once even when a warm-up thread and a chat ask at the same time."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import ROOT

PROBE = """
import sys, threading
import groupchat_core
from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler
threads = [threading.Thread(target=groupchat_core.prepare_litellm) for _ in range(4)]
[t.start() for t in threads]; [t.join() for t in threads]
first = ("litellm.proxy.openai_files_endpoints.common_utils",
         "litellm.responses.mcp.chat_completions_handler",
         "litellm.litellm_core_utils.default_encoding")
print(all(name in sys.modules for name in first))
print(groupchat_core.prepare_litellm() is sys.modules["litellm"])
"""


def test_preparing_litellm_imports_what_its_first_completion_would_and_sets_up_once():
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=True,
                          env={"PATH": "/usr/bin:/bin", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                               "PYTHONPATH": str(ROOT)})
    assert done.stdout.split() == ["True", "True"], done.stderr[-2000:]
