module Settings (parseSettings) where

import Data.Char (isSpace)
import qualified Data.Map as Map

-- | Read `key = value` lines, skipping comments.
parseSettings :: String -> Map.Map String String
parseSettings = Map.fromList . map splitPair . filter keep . lines
  where
    keep line = not (null line) && head line /= '#'

splitPair :: String -> (String, String)
splitPair line = (trim key, trim (drop 1 rest))
  where
    (key, rest) = break (== '=') line
    trim = reverse . dropWhile isSpace . reverse . dropWhile isSpace
