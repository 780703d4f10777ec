// Package ring is the consistent hash ring that spreads nodes over live
// conductors, with Ironic's semantics (ironic/common/hash_ring.py over tooz's
// HashRing):
//
//   - one ring per conductor group: a node of group g maps only to
//     conductors of group g (groups compare case-insensitively, as Ironic
//     stores them lowercased); a group without conductors owns nobody's work;
//   - each conductor is placed at Partitions points (Ironic: 2^5 = 32,
//     [DEFAULT]hash_partition_exponent), a point being the first eight bytes
//     of md5("host-i"), so every process that sees the same conductors builds
//     the same ring;
//   - a node's key (its UUID) is hashed the same way and the ring is walked
//     clockwise from it: the first distinct conductors met, up to Replicas
//     ([DEFAULT]hash_distribution_replicas, 1), are the node's hosts; the
//     first is its owner, which runs the node's periodic work.
//
// Movement is minimal: when a conductor joins, only keys it now owns change
// owner; when one leaves, only the keys it owned do.
//
// Ring is immutable and safe for concurrent use; build a new one when the set
// of live conductors changes.
package ring
