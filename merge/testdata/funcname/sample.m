#import <Foundation/Foundation.h>

@interface Store : NSObject
@property (nonatomic) NSInteger capacity;
- (BOOL)addItem:(NSString *)name count:(NSInteger)count;
@end

@implementation Store {
    NSMutableDictionary *_items;
}

- (instancetype)init
{
    self = [super init];
    if (self) {
        _items = [NSMutableDictionary dictionary];
        _capacity = 10;
    }
    return self;
}

- (BOOL)addItem:(NSString *)name count:(NSInteger)count
{
    if ((NSInteger)_items.count >= _capacity) {
        return NO;
    }
    _items[name] = @([_items[name] integerValue] + count);
    return YES;
}

+ (NSString *)describe
{
    return @"a store";
}

@end

static int helper(int a, int b)
{
    while (a > b) {
        a -= b;
    }
    return a;
}
