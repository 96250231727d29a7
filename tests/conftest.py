"""Shared pytest configuration: tiers (unit, integration, acceptance, performance) live in
folders; cost is marked (``slow``, ``bench``); hardware tests skip with their reason."""
