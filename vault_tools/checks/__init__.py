"""What a valid note is: the schemas, the rules, review assist, `vt validate` and its cache."""
