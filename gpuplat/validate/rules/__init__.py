"""Semantic rules, one module per spec section; importing this package registers them all."""
