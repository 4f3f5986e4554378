"""The Space bundle (`python -m openenv_painting.space_bundle`) through OpenEnv's own `openenv push`: the installed
CLI in a subprocess against the loopback Hub (`HF_ENDPOINT`), and what reached the Hub checked file by file."""

from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from openenv_painting import space_bundle
from tests.servers.hub import HUB_TOKEN


OPENENV = Path(sys.executable).parent / "openenv"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "space"
    assert space_bundle.main([str(out)]) == 0
    return out


def bundle_files(bundle: Path) -> dict[str, bytes]:
    return {path.relative_to(bundle).as_posix(): path.read_bytes() for path in bundle.rglob("*") if path.is_file()}


def test_the_bundle_is_the_tracked_files_of_the_package_and_the_engine(bundle) -> None:
    layout = space_bundle.bundle_layout(space_bundle.tracked_files())
    assert bundle_files(bundle) == {
        target: (space_bundle.REPOSITORY / source).read_bytes() for target, source in layout.items()
    }
    for required in ("openenv.yaml", "__init__.py", "client.py", "README.md", "Dockerfile", "pyproject.toml"):
        assert (bundle / required).is_file(), required
    assert (bundle / "ground" / "seed_pool").is_dir(), "the reference pool the judge draws from"


def test_the_dockerfile_copies_every_part_of_the_bundle(bundle) -> None:
    """Nothing the bundle holds is left out of the image (`make test-images` builds and runs it)."""
    copied = [
        source
        for line in (bundle / "Dockerfile").read_text().splitlines()
        if line.startswith("COPY ")
        for source in line.split()[1:-1]
    ]
    for entry in sorted(path.name for path in bundle.iterdir()):
        assert entry == "Dockerfile" or any(fnmatch.fnmatch(entry, source) for source in copied), entry


def test_a_non_empty_out_is_refused(tmp_path, capsys) -> None:
    (tmp_path / "kept.txt").write_text("mine")
    assert space_bundle.main([str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "exists and is not empty" in error
    assert [path.name for path in tmp_path.iterdir()] == ["kept.txt"]


@pytest.mark.slow
def test_openenv_validate_passes_the_bundle_at_the_static_level(bundle) -> None:
    checked = subprocess.run(
        [str(OPENENV), "validate", str(bundle), "--level", "static", "--skip-build"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    assert "static.manifest" in checked.stdout and "Verdict: PASS" in checked.stdout


@pytest.mark.slow
def test_openenv_push_uploads_the_bundle_as_a_docker_space(bundle, hub, tmp_path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    env |= {
        "HF_ENDPOINT": hub.endpoint,
        "HF_TOKEN": HUB_TOKEN,
        "HF_HUB_OFFLINE": "0",
        "HF_HOME": str(tmp_path / "hf-home"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
    }
    # --no-interface: the app is HTTPEnvServer's routes alone, so the Gradio page at /web that the interface turns
    # on (ENABLE_WEB_INTERFACE in the Dockerfile, `base_path: /web` in the card) is not served: the Space would
    # open on a 404. Without it, push uploads the bundle as it is.
    pushed = subprocess.run(
        [str(OPENENV), "push", str(bundle), "--repo-id", "me/painting", "--no-interface"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    output = pushed.stdout + pushed.stderr
    assert pushed.returncode == 0, output[-3000:]
    assert HUB_TOKEN not in output

    assert hub.created["me/painting"]["type"] == "space" and hub.created["me/painting"]["sdk"] == "docker"
    assert len(hub.calls_to("/api/whoami-v2")) == 1
    assert all(call.authorized for call in hub.calls if call.path.startswith("/api/"))
    uploaded = hub.repos["me/painting"]
    assert uploaded == bundle_files(bundle), "push uploads the bundle unchanged, and only it"
    assert hub.validated_cards == [uploaded["README.md"].decode()], "the Hub checks a card before the commit"
    card = yaml.safe_load(uploaded["README.md"].decode().split("---\n")[1])
    assert card["sdk"] == "docker" and card["app_port"] == 8000 and "openenv" in card["tags"]
    for path in ("Dockerfile", "openenv.yaml", "client.py", "server/app.py", "server/asgi.py", "requirements.lock"):
        assert path in uploaded, path
    for engine in ("ground/", "episodes/", "renderers/", "rewards/", "watercolour/"):
        assert any(path.startswith(engine) for path in uploaded), engine
    assert not [path for path in uploaded if {"__pycache__", ".venv", "node_modules"} & set(path.split("/"))]
    assert not [path for path in uploaded if path.endswith(".pyc")]


def test_the_loopback_hub_answers_whoami_for_its_token_only(hub) -> None:
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    assert HfApi(endpoint=hub.endpoint, token=HUB_TOKEN).whoami()["name"] == "me"
    with pytest.raises(HfHubHTTPError, match="Invalid user token"):
        HfApi(endpoint=hub.endpoint, token="hf_not_the_loopbacks").whoami()
