"""`watercolour space`: wake, sleep or inspect the scorer Space by hand, with the same code the flows run.

`wake` restarts a paused or sleeping Space and waits for RUNNING (and, with --health-url, for the model to load);
`pause` and `sleep` are idempotent; `status` prints the stage and the idle timeout.
"""

from __future__ import annotations

import argparse
import os
import sys

from ground.run_config import SpaceSettings
from watercolour.commands.arguments import UsageError, positive_float, positive_int
from watercolour.operations.space_control import SpaceUnavailable, hub_api, sleep_space, wait_until_loaded, wake_space


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["status", "wake", "pause", "sleep"])
    parser.add_argument("repo_id", help="The Space, e.g. me/watercolour-hpsv3.")
    parser.add_argument("--endpoint", default="https://huggingface.co", help="Hub API endpoint.")
    parser.add_argument("--token-env", default="HF_TOKEN", help="Env var holding the Space owner's token.")
    parser.add_argument("--idle-s", type=positive_int, default=900, help="Idle timeout for `sleep`, in seconds.")
    parser.add_argument("--health-url", help="With `wake`: also wait until this /health says loaded.")
    parser.add_argument("--timeout-s", type=positive_float, default=900.0, help="Budget for `wake`, in seconds.")


def run(args: argparse.Namespace) -> int:
    from huggingface_hub.errors import RepositoryNotFoundError

    if not os.environ.get(args.token_env):
        raise UsageError(f"${args.token_env} is not set: Space control needs the Space owner's token in it")
    try:
        return control(args)
    except RepositoryNotFoundError:
        raise UsageError(f"no Space {args.repo_id} at {args.endpoint} that this token can see") from None
    except (SpaceUnavailable, OSError) as error:  # the Hub or the Space did not answer: not bad input, still one line
        print(f"watercolour space: {error}", file=sys.stderr)
        return 1


def control(args: argparse.Namespace) -> int:
    settings = SpaceSettings(
        repo_id=args.repo_id,
        endpoint=args.endpoint,
        token_env=args.token_env,
        idle_s=args.idle_s,
        wake_timeout_s=args.timeout_s,
        load_timeout_s=args.timeout_s,
    )
    if args.action == "status":
        runtime = hub_api(settings).get_space_runtime(settings.repo_id)
        print(f"{settings.repo_id}: {runtime.stage}, hardware {runtime.hardware}, sleeps after {runtime.sleep_time} s")
    elif args.action == "wake":
        found = wake_space(settings)
        print(f"{settings.repo_id}: RUNNING (was {found})")
        if args.health_url:
            waited = wait_until_loaded(args.health_url, settings.load_timeout_s, settings.poll_s)
            print(f"model loaded after {waited:.0f} s")
    else:
        print(f"{settings.repo_id}: {sleep_space(settings, args.action)}")
    return 0
