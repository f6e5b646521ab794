"""Thin views: validate input, make one call into broker/, render the answer."""
