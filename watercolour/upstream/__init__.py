"""Where the project reaches into TRL's and transformers' private code: the one list of those seams, with the
signatures and versions they were written for, and the check that refuses any other versions."""
