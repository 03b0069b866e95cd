"""`gpuplat policy`'s text: one line per rule with the count and a few examples, mandatory first."""

from __future__ import annotations

from gpuplat.policies.runner import Violation
from gpuplat.render.policy import render_violations


def _urn(name: str) -> str:
    return f"urn:pulumi:dev::gpu-platform::aws:s3/bucket:Bucket::{name}"


def test_one_line_per_rule_with_count_and_examples() -> None:
    tags = [
        Violation("aws-required-tags", "mandatory", _urn(f"b{i}"), "missing required tags: cost-center")
        for i in range(66)
    ]
    advisory = [Violation("gpu-budget", "advisory", "", "over budget")]
    lines = render_violations([*advisory, *tags], 120).splitlines()
    assert lines == [
        "mandatory aws-required-tags: 66 resource(s): missing required tags: cost-center; e.g. b0, b1, b2 and 63 more",
        "advisory gpu-budget: 1 resource(s): over budget; e.g. (stack)",
        lines[2],
    ]
    assert lines[2].startswith("67 violation(s), 66 mandatory, 1 advisory; ") and lines[2].endswith(
        " over 120 resources"
    )


def test_different_messages_of_one_rule_are_counted() -> None:
    found = [Violation("r", "advisory", _urn("a"), "m1"), Violation("r", "advisory", _urn("b"), "m2")]
    assert (
        render_violations(found, 2).splitlines()[0]
        == "advisory r: 2 resource(s): m1 (and 1 other message(s)); e.g. a, b"
    )


def test_nothing_found() -> None:
    assert render_violations([], 5).startswith("0 violation(s), 0 mandatory, 0 advisory; ")
