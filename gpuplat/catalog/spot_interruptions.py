"""Monthly spot interruption frequency per instance type (the simulator's spot hazard).

AWS publishes buckets, not rates (Spot Instance Advisor, us-east-1, Linux): "<5 %", "5-10 %",
"10-15 %", "15-20 %", "> 20 %" of instances interrupted in a month. The value taken is the
bucket's middle, and for "> 20 %" its lower bound, so a replay errs towards fewer interruptions
than the real market. A type without an entry is taken at the worst bucket's bound
(`UNLISTED_MONTHLY`) and the simulator says so.
"""

from __future__ import annotations

from collections.abc import Mapping

AS_OF = "2025-06"
SOURCE = "AWS Spot Instance Advisor, us-east-1 Linux, June 2025 snapshot"
NOTICE_SECONDS = 120  # EC2's interruption notice

MONTHLY_INTERRUPTION: Mapping[str, float] = {
    "p5.48xlarge": 0.20,  # > 20 %
    "g6e.12xlarge": 0.20,  # > 20 %
    "g5.12xlarge": 0.20,  # > 20 %
    "p4d.24xlarge": 0.125,  # 10-15 %
    "p5en.48xlarge": 0.025,  # < 5 %
}
UNLISTED_MONTHLY = 0.20
