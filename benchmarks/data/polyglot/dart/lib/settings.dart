/// Reads `key = value` lines of a settings file.
Map<String, String> parseSettings(String text) {
  final result = <String, String>{};
  for (final line in text.split('\n')) {
    if (line.trim().isEmpty || line.startsWith('#')) continue;
    final i = line.indexOf('=');
    result[line.substring(0, i).trim()] = line.substring(i + 1).trim();
  }
  return result;
}
