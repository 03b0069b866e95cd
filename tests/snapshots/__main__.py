"""Rewrite the committed preview snapshots of every shipped stack."""

from tests.snapshots import CHART, STACKS, render, render_chart, snapshot_path

for stack in STACKS:
    path = snapshot_path(stack)
    text = render(stack)
    changed = not path.exists() or path.read_text(encoding="utf-8") != text
    path.write_text(text, encoding="utf-8")
    print(f"{path}: {'updated' if changed else 'unchanged'}")

text = render_chart()
changed = not CHART.exists() or CHART.read_text(encoding="utf-8") != text
CHART.write_text(text, encoding="utf-8")
print(f"{CHART}: {'updated' if changed else 'unchanged'}")
