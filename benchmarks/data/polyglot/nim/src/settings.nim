## Reads key = value lines of a settings file.
import strutils, tables

proc parseSettings*(text: string): Table[string, string] =
  for line in text.splitLines:
    if line.strip.len == 0 or line.startsWith("#"): continue
    let parts = line.split('=', maxsplit = 1)
    result[parts[0].strip] = parts[1].strip
