package Store::LruCache;
# A bounded cache that forgets the least recently used key.
use strict;
use warnings;

sub new {
    my ($class, $capacity) = @_;
    return bless { capacity => $capacity, order => [], entries => {} }, $class;
}

sub put {
    my ($self, $key, $value) = @_;
    $self->{order} = [ (grep { $_ ne $key } @{ $self->{order} }), $key ];
    $self->{entries}{$key} = $value;
    $self->evict_oldest;
}

# Drop the key used longest ago once over capacity.
sub evict_oldest {
    my ($self) = @_;
    while (@{ $self->{order} } > $self->{capacity}) {
        my $oldest = shift @{ $self->{order} };
        delete $self->{entries}{$oldest};
    }
}

1;
