# Copies a folder to a timestamped backup folder and prunes old backups.
function New-Backup {
    param([string]$Source, [string]$Destination)
    $stamp = Get-Date -Format "yyyyMMdd-HHmmss"
    $target = Join-Path $Destination "backup-$stamp"
    Copy-Item -Path $Source -Destination $target -Recurse
    return $target
}

function Remove-OldBackups {
    param([string]$Destination, [int]$Keep = 5)
    Get-ChildItem $Destination -Directory |
        Sort-Object CreationTime -Descending |
        Select-Object -Skip $Keep |
        Remove-Item -Recurse -Force
}
