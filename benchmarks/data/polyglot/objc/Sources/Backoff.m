#import <Foundation/Foundation.h>

// Pause before the n-th retry: doubles each time, capped.
NSTimeInterval RetryDelay(NSUInteger attempt) {
    return MIN(10.0, 0.1 * pow(2.0, attempt));
}

BOOL RetryWithBackoff(BOOL (^action)(NSError **), NSUInteger attempts, NSError **error) {
    for (NSUInteger n = 0; n < attempts; n++) {
        if (action(error)) return YES;
        [NSThread sleepForTimeInterval:RetryDelay(n)];
    }
    return NO;
}
