"""A loopback "provider" for fault tests that kill skillopt: the models of a run in a
child process are `scripted/provider:target` and `scripted/provider:optimizer`,
which POST each call to a server in the test process. The server outlives every
kill, so it counts what the provider really answered across crashes and resumes,
and it can kill the child (SIGKILL) the moment a chosen request arrives.

The child's side (the two functions) uses the standard library only, so a run
starts in well under a second.
"""

from __future__ import annotations

import json
import os
import urllib.request

URL_VAR = "SKILLOPT_TEST_PROVIDER"


def _post(role: str, messages: list[dict]) -> str:
    body = json.dumps({"role": role, "messages": messages}).encode()
    request = urllib.request.Request(
        os.environ[URL_VAR], data=body, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["content"]


def target(messages: list[dict]) -> str:
    return _post("target", messages)


def optimizer(messages: list[dict]) -> str:
    return _post("optimizer", messages)
