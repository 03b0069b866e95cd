"""A fleet seen from one member: the other members' specs, compiled offline, and the numbers of
the whole fleet (members, order, per-tenant reach, combined quota, cost per member)."""
