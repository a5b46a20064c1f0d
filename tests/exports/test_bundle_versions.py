"""Bundles say which code wrote them (`written_by`: app, litellm and store schema versions);
bundles from before 0.2.0, without it, still import; a malformed one is one clear error.

Private imports (`exports._bundles`): units or test hooks with no public name; everything public
comes from the public API.
"""

from __future__ import annotations

import json

import pytest

from groupchat_core import (
    Agent,
    ConfigError,
    GroupChat,
    app_version,
    import_bundle,
    litellm_version,
)
from groupchat_core.exports._bundles import export_bundle, read_bundle
from groupchat_core.store import SCHEMA_VERSION, RunStore

pytestmark = pytest.mark.usefixtures("fresh_engines")


def recorded(store: RunStore) -> str:
    chat = GroupChat(agents=[Agent(agent_name=n, model_name="sim/balanced") for n in "AB"],
                     max_loops=3)
    store.attach(chat)
    chat.run("Plan?")
    return chat.last_run.run_id


def test_a_bundle_records_the_code_that_wrote_it(tmp_path):
    store = RunStore(f"sqlite:///{tmp_path}/a.db")
    data = export_bundle(store, recorded(store))
    assert data["written_by"] == {"app_version": app_version(),
                                  "litellm_version": litellm_version(),
                                  "store_schema_version": SCHEMA_VERSION}
    assert read_bundle(json.dumps(data)).written_by.app_version == "0.2.0"


def test_a_bundle_from_before_written_by_still_imports(tmp_path):
    store = RunStore(f"sqlite:///{tmp_path}/a.db")
    run_id = recorded(store)
    old = export_bundle(store, run_id)
    del old["written_by"]
    other = RunStore(f"sqlite:///{tmp_path}/b.db")
    assert import_bundle(other, json.dumps(old)) == run_id
    assert other.load_run(run_id) == store.load_run(run_id)


@pytest.mark.parametrize(("written_by", "message"), [
    ({"app_version": "0.2.0", "litellm_version": "1", "store_schema_version": 5, "x": 1},
     "written_by.x"),
    ({"app_version": "", "litellm_version": "1", "store_schema_version": 5},
     "written_by.app_version"),
    ({"app_version": "0.2.0", "litellm_version": "1", "store_schema_version": "five"},
     "written_by.store_schema_version"),
    ("0.2.0", "written_by"),
])
def test_a_malformed_written_by_is_one_clear_error(tmp_path, written_by, message):
    store = RunStore(f"sqlite:///{tmp_path}/a.db")
    data = {**export_bundle(store, recorded(store)), "written_by": written_by}
    with pytest.raises(ConfigError, match=message) as error:
        read_bundle(json.dumps(data), "old.json")
    assert str(error.value).count("\n") == 0
