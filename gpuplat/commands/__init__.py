"""The commands of the CLI, one module each: check, plan, graph (pure, no pulumi) and preview,
policy, verify (they record the stack through gpuplat.preview, which loads pulumi).

gpuplat/cli.py parses the arguments and imports a command's module only when it runs. A command
gathers (compile, record, diff, evaluate) and hands the result to a renderer in gpuplat/render/;
it prints and picks the exit code, the same for every command: 0 ok (warnings allowed), 1 invalid
spec / violations / refused diff, 2 usage or IO.
"""

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
