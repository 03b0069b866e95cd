import pulumi

from components import GpuPlatform, GpuPlatformArgs
from gpuplat.compile import SpecError, UnknownStackError, load_for_stack

try:
    model, plan = load_for_stack(pulumi.get_stack())
except (SpecError, UnknownStackError) as err:
    # The diagnostics say where the spec is wrong; a traceback would only bury them.
    raise pulumi.RunError(str(err)) from None
GpuPlatform(model.metadata.name, GpuPlatformArgs(model, plan))
