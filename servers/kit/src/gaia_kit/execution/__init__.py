"""Running code and commands: the bubblewrap sandbox, the command policy, the shell, process groups with deadlines,
and external decoders confined to the files they are handed."""
