# pyright: strict
"""The catalog's Helm charts on this machine: the chart cache `gpuplat charts pull` fills with
Helm's own SDK (pull.py) and `gpuplat verify` renders from (cache.py). docs/charts.md says how."""
