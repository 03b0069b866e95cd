# pyright: strict
"""EC2 Capacity Blocks for ML: which instance types can be bought as one, and where.

Source (read 2026-12-03): Amazon EC2 User Guide, "Capacity Blocks for ML",
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html, which lists
p5.48xlarge (us-east-1, us-east-2, us-west-2, ap-northeast-1), p5e.48xlarge and p5en.48xlarge
(us-east-2), p4d.24xlarge (us-east-2, us-west-2), trn1 and trn2; p6-b200 capacity blocks were
announced with the instance (https://www.gpueconomics.com/blog/understanding-aws-capacity-blocks-for-gpus,
"p6 ... you'll need to buy a capacity block"), the region list of that page not read here.

What a Capacity Block is, from the same guide ("Work with Capacity Blocks"): a targeted
Capacity Reservation in one Availability Zone, bought with PurchaseCapacityBlock from an
offering (DescribeCapacityBlockOfferings) for 1-14 days, then in 7-day steps up to 182 days,
of 1, 2, 4, 8, 16, 32 or 64 instances, paid up front, neither modifiable nor cancellable.
Every block ends at 11:30 UTC and EC2 starts terminating its instances 30 minutes before the
end. CreateCapacityReservation cannot make one, so gpuplat never creates blocks: a pool
names the blocks an operator bought (by id or tag) and Karpenter launches into them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

CAPACITY_BLOCKS_AS_OF = "2026-12-03"
CAPACITY_BLOCKS_SOURCE = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html"

# Instance type -> the regions that sell it as Capacity Blocks; empty: regions not catalogued.
CAPACITY_BLOCK_REGIONS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "p5.48xlarge": ("us-east-1", "us-east-2", "us-west-2", "ap-northeast-1"),
        "p5e.48xlarge": ("us-east-2",),
        "p5en.48xlarge": ("us-east-2",),
        "p4d.24xlarge": ("us-east-2", "us-west-2"),
        "p6-b200.48xlarge": (),
    }
)

# On-demand capacity reservations of these types are rarely granted: AWS sells their capacity
# as Capacity Blocks (p5e has no on-demand list price in us-east-1 at all, see prices.py), and
# an ODCR that is granted bills the on-demand rate around the clock, used or not.
SCARCE_FOR_ODCR = frozenset({"p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"})

# Types EC2 sells only as Capacity Blocks: no region offers them on demand (the Price List has no
# on-demand price for them anywhere), so an on-demand NodePool of one never gets a node and
# CreateCapacityReservation refuses one; spot is spare on-demand capacity, so none either.
BLOCKS_ONLY: Mapping[str, str] = MappingProxyType(
    {"p5e.48xlarge": "p5e.48xlarge is sold only as Capacity Blocks (catalog: in us-east-2)"}
)

# What a block can be (the guide above): its instance count, its length in days, and the part
# of its last day its instances have: EC2 starts terminating them 30 minutes before the end.
BLOCK_INSTANCE_COUNTS = (1, 2, 4, 8, 16, 32, 64)
BLOCK_DAYS = (*range(1, 15), *range(21, 183, 7))  # 1-14 days, then 7-day steps up to 182
BLOCK_TERMINATION_LEAD_SECONDS = 1800

BLOCK_END_NOTE = (
    "a Capacity Block has a fixed end (11:30 UTC of its last day); EC2 terminates its instances "
    "from 30 minutes before, and Karpenter stops launching into it and drains its nodes; the "
    "reserved NodePool then has no capacity until the next block an operator buys and tags"
)
