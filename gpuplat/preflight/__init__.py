"""Preflight: the account facts a deploy depends on, checked before anything exists (one implementation for
the program at start, `gpuplat preflight` and `gpuplat preview --account-facts`)."""
