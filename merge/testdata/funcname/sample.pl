package Inventory::Store;

use strict;
use warnings;

sub new {
    my ($class, %args) = @_;
    my $self = { items => {}, capacity => $args{capacity} // 10 };
    return bless $self, $class;
}

sub add ($$$) {
    my ($self, $name, $count) = @_;
    return 0 if keys %{ $self->{items} } >= $self->{capacity};
    $self->{items}{$name} += $count;
    return 1;
}

sub count : lvalue {
    my ($self, $name) = @_;
    $self->{items}{$name};
}

sub forward;  # defined elsewhere

BEGIN {
    our $VERSION = '1.0';
}

=head1 NAME

Inventory::Store - a small store

=head2 Methods

The methods above.

=cut

sub total {
    my ($self) = @_;
    my $sum = 0;
    $sum += $_ for values %{ $self->{items} };
    return $sum;
}

1;
