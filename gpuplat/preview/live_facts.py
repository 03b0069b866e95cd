"""Read one account's facts through the real Pulumi engine, registering nothing.

The reader is the program's own (components/aws/preflight.py: pulumi-aws plain invokes), run as
an inline program of the Automation API on a throw-away local backend, so `gpuplat preflight`
and `pulumi up` read the account the same way, with the same provider and credentials
(the environment's: AWS_PROFILE, AWS_ACCESS_KEY_ID, ... of the deploy role). Needs the Pulumi
CLI and the aws provider plugin, as any deploy does.
"""

from __future__ import annotations

import tempfile
from typing import Any

from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.preflight.facts import AccountFacts, FactsError

from .stack import PROJECT


def read_live_facts(model: Platform, plan: Plan) -> AccountFacts:
    from pulumi import automation as auto

    from components.aws.preflight import read_facts

    read: dict[str, AccountFacts] = {}

    def program() -> None:
        read["facts"] = read_facts(model, plan)

    with tempfile.TemporaryDirectory(prefix="gpuplat-preflight-") as backend:
        settings = auto.ProjectSettings(
            name=PROJECT, runtime="python", backend=auto.ProjectBackend(url=f"file://{backend}")
        )
        options = auto.LocalWorkspaceOptions(
            project_settings=settings, env_vars={"PULUMI_CONFIG_PASSPHRASE": ""}, work_dir=backend
        )
        try:
            stack: Any = auto.create_or_select_stack("preflight", PROJECT, program, opts=options)
            stack.set_config("aws:region", auto.ConfigValue(model.target.region or ""))
            stack.preview()
        except auto.errors.CommandError as err:
            raise FactsError(f"reading the account's facts through Pulumi failed: {err}") from None
        except FileNotFoundError as err:
            raise FactsError(f"reading the account's facts needs the Pulumi CLI ({err})") from None
    if "facts" not in read:
        raise FactsError("the Pulumi engine ran no program; no account facts were read")
    return read["facts"]
