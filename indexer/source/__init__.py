"""git tree -> files -> chunks: reading commits, languages, chunking, path classes, secrets."""
