"""What the sweep tests share that is not a fixture: agent lists (fixtures: conftest.py)."""

PERSONAS = [{"agent_name": n, "model_name": m} for n, m in (
    ("Optimist", "sim/eager"), ("Pessimist", "sim/balanced"), ("Realist", "sim/reserved"))]
DEBATERS = [{"agent_name": n, "system_prompt": p, "model_name": "sim/balanced"} for n, p in (
    ("Optimist", "You argue for the benefits."), ("Pessimist", "You argue for the risks."),
    ("Realist", "You seek a balanced analysis."))]
