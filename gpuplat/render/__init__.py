"""Renderers: what the commands print, from the model, the plan and the recordings they gather.

plan.py (with plan_capacity.py, plan_kubernetes.py, plan_workloads.py): the plan as a JSON
document and as text tables; comment.py (with comment_summary.py, comment_workloads.py): the
pull-request comment in markdown; graph.py: the platform as a mermaid diagram or JSON;
preview.py and policy.py: `gpuplat preview`'s and `gpuplat policy`'s text. Text meant for people
is laid out by the jinja2 templates in templates/; the data shaping stays in Python.

Pure: nothing here records, compiles or imports pulumi.
"""
