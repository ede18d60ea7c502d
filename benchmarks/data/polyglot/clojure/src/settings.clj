(ns store.settings
  (:require [clojure.string :as str]))

(defn- split-pair [line]
  (let [[k v] (str/split line #"=" 2)]
    [(str/trim k) (str/trim v)]))

(defn parse
  "Reads key = value lines of a settings file, skipping comments."
  [text]
  (->> (str/split-lines text)
       (remove #(or (str/blank? %) (str/starts-with? % "#")))
       (map split-pair)
       (into {})))
