"""Preflight: the account facts a deploy depends on, checked before anything exists (one implementation for
the program at start, `gpuplat preflight` and `gpuplat preview --account-facts`)."""

# A stack setting the offline recorder sets for the recordings that judge a stack rather than
# deploy it (verify, policy, the base of `preview --base`): the program's preflight then warns
# about what it would refuse and goes on. Honoured only in a preview (a dry run): `pulumi up`
# always stops. Value: "report"; anything else (or nothing) enforces.
PREFLIGHT_SETTING = "gpuplat:preflight"
REPORT = "report"
