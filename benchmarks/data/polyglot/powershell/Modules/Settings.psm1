# Reads key = value lines of a settings file.
function Read-Settings {
    param([string]$Path)
    $settings = @{}
    foreach ($line in Get-Content $Path) {
        if ($line -match '^\s*(#|$)') { continue }
        $key, $value = $line -split '=', 2
        $settings[$key.Trim()] = $value.Trim()
    }
    return $settings
}
