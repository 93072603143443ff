"""Running code and commands: the bubblewrap sandbox, the command policy, the shell, process groups with deadlines."""
