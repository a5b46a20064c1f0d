"""The suite, by area: one folder per package (engine/, providers/, store/, ...), browser tests in
e2e/, what every area shares in helpers/ (plain code) and conftest.py (fixtures)."""
