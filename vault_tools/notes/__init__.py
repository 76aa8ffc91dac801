"""Reading and writing review notes: the parser, the byte-preserving writer, the vault listing."""
