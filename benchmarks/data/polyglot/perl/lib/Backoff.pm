package Store::Backoff;
# Retry a failing call with exponentially growing pauses.
use strict;
use warnings;
use Time::HiRes qw(sleep);

sub retry_delay {
    my ($attempt) = @_;
    my $delay = 0.1 * 2**$attempt;
    return $delay > 10 ? 10 : $delay;
}

sub with_retries {
    my ($code, $attempts) = @_;
    for my $n (0 .. $attempts - 1) {
        my $result = eval { $code->() };
        return $result unless $@;
        die $@ if $n + 1 >= $attempts;
        sleep(retry_delay($n));
    }
}

1;
