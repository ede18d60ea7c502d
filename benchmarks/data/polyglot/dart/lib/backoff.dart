import 'dart:math';

/// Pause before the n-th retry: doubles each time, capped.
Duration retryDelay(int attempt) =>
    Duration(milliseconds: min(10000, 100 * pow(2, attempt).toInt()));

Future<T> retry<T>(Future<T> Function() action, {int attempts = 5}) async {
  for (var n = 0;; n++) {
    try {
      return await action();
    } catch (e) {
      if (n + 1 >= attempts) rethrow;
      await Future.delayed(retryDelay(n));
    }
  }
}
