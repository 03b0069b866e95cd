"""Rewrite the committed preview snapshots of every shipped stack."""

from tests.snapshots import STACKS, render, snapshot_path

for stack in STACKS:
    path = snapshot_path(stack)
    text = render(stack)
    changed = not path.exists() or path.read_text(encoding="utf-8") != text
    path.write_text(text, encoding="utf-8")
    print(f"{path}: {'updated' if changed else 'unchanged'}")
