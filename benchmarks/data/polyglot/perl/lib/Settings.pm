package Store::Settings;
# Reads key = value lines of a settings file.
use strict;
use warnings;

sub parse_settings {
    my ($text) = @_;
    my %result;
    for my $line (split /\n/, $text) {
        next if $line =~ /^\s*(#|$)/;
        my ($key, $value) = split /=/, $line, 2;
        s/^\s+|\s+$//g for $key, $value;
        $result{$key} = $value;
    }
    return \%result;
}

1;
