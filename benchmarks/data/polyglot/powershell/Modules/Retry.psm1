# Retry a script block with exponentially growing pauses.
function Invoke-WithRetry {
    param([scriptblock]$Action, [int]$Attempts = 5)
    for ($n = 0; $n -lt $Attempts; $n++) {
        try {
            return & $Action
        } catch {
            if ($n + 1 -ge $Attempts) { throw }
            Start-Sleep -Milliseconds ([math]::Min(10000, 100 * [math]::Pow(2, $n)))
        }
    }
}
