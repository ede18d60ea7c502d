(ns store.backoff
  "Retry a failing call with exponentially growing pauses.")

(defn delay-ms [attempt]
  (min 10000 (* 100 (long (Math/pow 2 attempt)))))

(defn retry [f attempts]
  (loop [n 0]
    (let [result (try {:ok (f)} (catch Exception e {:error e}))]
      (if (or (:ok result) (>= (inc n) attempts))
        result
        (do (Thread/sleep (delay-ms n)) (recur (inc n)))))))
