"""Text that came from an agent, a file or a server: parsed with bounds on the way in
(`json_input`), read only from regular files (`files`), cleaned and escaped on the way out
(`text`), credentials masked (`redact`)."""
