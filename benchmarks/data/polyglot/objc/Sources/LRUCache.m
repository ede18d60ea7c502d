#import "LRUCache.h"

// A bounded cache that forgets the least recently used key.
@implementation LRUCache {
    NSMutableArray *_order;
    NSMutableDictionary *_entries;
}

- (instancetype)initWithCapacity:(NSUInteger)capacity {
    if ((self = [super init])) {
        _capacity = capacity;
        _order = [NSMutableArray array];
        _entries = [NSMutableDictionary dictionary];
    }
    return self;
}

- (void)setObject:(id)object forKey:(id<NSCopying>)key {
    [_order removeObject:key];
    [_order addObject:key];
    _entries[key] = object;
    [self evictOldest];
}

// Drop the key used longest ago once over capacity.
- (void)evictOldest {
    while (_order.count > _capacity) {
        [_entries removeObjectForKey:_order.firstObject];
        [_order removeObjectAtIndex:0];
    }
}
@end
