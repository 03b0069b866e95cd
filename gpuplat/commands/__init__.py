"""The commands of the CLI, one module each: check, plan, graph (pure, no pulumi) and preview,
policy, verify (they record the stack through gpuplat.preview, which loads pulumi).

gpuplat/cli.py parses the arguments and imports a command's module only when it runs. A command
gathers (compile, record, diff, evaluate) and hands the result to a renderer in gpuplat/render/;
it prints and picks the exit code, the same for every command: 0 ok (warnings allowed), 1 invalid
spec / violations / refused diff, 2 usage or IO.
"""

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
EXIT_CODES = "exit codes: 0 ok (warnings allowed), 1 invalid spec / violations / refused diff, 2 usage or IO"


# What each command does, as `gpuplat --help` lists it (the first line) and `gpuplat CMD --help`
# describes it (the whole text): one place, so the two never disagree.
ABOUT: dict[str, tuple[str, str]] = {
    "init": (
        "start a new platform project: Pulumi program, spec, stacks, CI",
        "Writes Pulumi.yaml, __main__.py, platform/platform.yaml (one pool, one tenant, valid with no "
        "warning), stacks/ for dev, staging and prod, policy/config.json, the CI workflows and a README. "
        "Never overwrites a file.",
    ),
    "check": (
        "validate the spec (schema + semantic rules)",
        "Reads the spec and the stack's overlay and prints every diagnostic, file:line:col first.",
    ),
    "plan": (
        "print the derived numbers: markets, sharing, fabric, storage, cost",
        "The numbers a platform team would otherwise work out on a spreadsheet, before anything is "
        "provisioned. Imports no Pulumi module.",
    ),
    "preview": (
        "run the Pulumi program offline and print every resource",
        "Records the stack's Pulumi program without credentials or the Pulumi CLI; with --base, the "
        "changes against a git ref, refusing data loss unless --allow-replace.",
    ),
    "policy": (
        "run the policy pack offline on the recorded resources",
        "The rules of the CrossGuard pack in policy/, one line per rule with its count; a mandatory violation exits 1.",
    ),
    "verify": (
        "follow every tenant's job through the emitted objects to a GPU",
        "For every tenant and pool it may use: queue, quota, placement, nodes, capacity, device plugin, "
        "admission, volumes. A broken journey exits 1.",
    ),
    "preflight": (
        "check the account's offerings, versions and quotas for the stack",
        "Reads AWS (or --account-facts) for what the stack needs before anything is created.",
    ),
    "graph": (
        "print a mermaid diagram of the platform",
        "Pools, fabric, storage tiers and tenants as a mermaid flowchart (or JSON nodes and edges).",
    ),
    "charts": (
        "fetch the catalog's Helm charts at their pinned versions (charts pull)",
        "`gpuplat charts pull` fetches every chart the catalog pins (or the keys named) with Helm's own "
        "SDK into the chart cache gpuplat verify renders from; --into DIR also fills a directory for the "
        "stack setting gpuplat:localCharts. Needs no project.",
    ),
    "explain": (
        "say what a diagnostic code means, why, and how to fix it",
        "From the installed gpuplat: the rule's level, rationale, fix, source and the rules page when one is known.",
    ),
    "docs": (
        "print a reference page: spec (every field), rules (every code), catalog",
        "The pages of the installed gpuplat, rendered from its schema, registries and catalog (Markdown).",
    ),
    "schema": (
        "write the installed gpuplat's JSON Schema for editors",
        "Where the spec's `# yaml-language-server: $schema=` line points (default schemas/platform.schema.json); "
        "`check` warns (GP023) while that copy is another version's.",
    ),
    "simulate": (
        "replay a GPU job trace: waste, waiting and cost of this spec",
        "Replays the trace against the plan and the scaling policy as emitted (docs/simulate.md).",
    ),
}
