import pulumi

from components import GpuPlatform, GpuPlatformArgs
from gpuplat.compile import load_for_stack

model, plan = load_for_stack(pulumi.get_stack())
GpuPlatform(model.metadata.name, GpuPlatformArgs(model, plan))
