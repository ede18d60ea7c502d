# Reads key = value lines of a settings file.
parse_settings <- function(text) {
  lines <- strsplit(text, "\n")[[1]]
  lines <- lines[nzchar(lines) & !startsWith(lines, "#")]
  pairs <- regmatches(lines, regexpr("=", lines), invert = TRUE)
  values <- lapply(pairs, function(p) trimws(p[2]))
  names(values) <- vapply(pairs, function(p) trimws(p[1]), "")
  values
}
