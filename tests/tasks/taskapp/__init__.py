"""An installed app holding Django Tasks tasks (installed only while tests/tasks runs)."""
